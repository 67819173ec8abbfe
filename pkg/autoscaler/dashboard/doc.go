// Package dashboard serves the autoscaler's live dashboard: one HTML page,
// its script and its style sheet, embedded in the binary (no CDN, no build
// step). The page reads the autoscaler's API on the same origin (GET
// /events?revision=NS/NAME, Server-Sent Events of autoscaler.Update) and
// draws the revisions, the selected revision's chart and its last decisions.
//
// It owns the files under ui/ and index.html; it must not own data: every
// number comes from the autoscaler's API, so the page shows nothing the API
// does not. It imports only the standard library.
package dashboard
