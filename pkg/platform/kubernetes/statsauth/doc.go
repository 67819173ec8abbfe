// Package statsauth checks who posts stats to the autoscaler on a
// cluster (TokenReviewer, an autoscaler.Authenticator): the activators
// present their projected ServiceAccount token, which the API server
// reviews (authentication.k8s.io/v1 TokenReview), and only the
// activator's ServiceAccount with the autoscaler's audience is accepted.
//
// It keeps no token, only the SHA-256 of each with its answer for a
// while, and never logs one.
package statsauth
