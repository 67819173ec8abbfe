package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"ebb.dev/ebb/internal/grpcsample"
	"ebb.dev/ebb/internal/testnet"
)

// failMessage is what the gRPC app answers every call with, as an error
// status: a Trailers-Only response (one HEADERS frame with END_STREAM,
// grpc-status in it, no body).
const failMessage = "the app failed this call"

// startFailingGRPC serves a gRPC app (h2c) whose every call fails with
// codes.Unknown, until the test ends.
func startFailingGRPC(t *testing.T) string {
	t.Helper()
	ln := listen(t)
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		return status.Error(codes.Unknown, failMessage)
	}))
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// trailersOnlyCalls is the number of failing calls through each route.
const trailersOnlyCalls = 500

// TestTrailersOnlyKeepsItsStatus: an app's error status reaches a gRPC
// client through each proxy, every time. A Trailers-Only response must
// leave the proxy as it came, one HEADERS frame with END_STREAM: before,
// the proxies flushed the head at once and ended the stream with an empty
// DATA frame, and grpc-go then reported some calls as "Internal: server
// closed the stream without sending trailers" (7 and 16 of 200).
func TestTrailersOnlyKeepsItsStatus(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			d := front(t, r, startFailingGRPC(t))

			// At the frame level: one HEADERS frame that ends the stream,
			// for each of 100 calls at once.
			raw := testnet.DialH2(t, d.addr)
			const streams = 100
			for i := range streams {
				raw.Request(t, uint32(2*i+1), "POST", host, grpcsample.HelloMethod, true, "content-type", "application/grpc", "te", "trailers")
			}
			got, ok := raw.Wait(requestTimeout, func(s map[uint32]testnet.H2Stream, ended bool) bool {
				n := 0
				for _, st := range s {
					if st.Ended || st.Reset {
						n++
					}
				}
				return n == streams || ended
			})
			split := 0
			for id, st := range got {
				if !st.HeadEnds || st.Data != 0 || st.Status != "200" {
					split++
					if split == 1 {
						t.Errorf("stream %d: %+v, want one HEADERS frame (200) with END_STREAM and no DATA", id, st)
					}
				}
			}
			if !ok || split > 0 || len(got) != streams {
				t.Errorf("%d of %d failing calls answered as more than one frame (%d answered in all)", split, streams, len(got))
			}

			codes := callMany(t, d.addr, trailersOnlyCalls)
			want := fmt.Sprintf("%v: %s", "Unknown", failMessage)
			if codes[want] != trailersOnlyCalls {
				t.Errorf("%d failing calls through the %s got %v; want all %q", trailersOnlyCalls, r, codes, want)
			}
		})
	}
}

// callMany makes n calls of Greeter.Hello through addr (10 at a time, on
// one connection, as grpcload does) and counts their statuses.
func callMany(t *testing.T, addr string, n int) map[string]int {
	t.Helper()
	cc := testnet.GRPCClient(t, addr, grpc.WithAuthority(host))
	var mu sync.Mutex
	got := map[string]int{}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for i := range next {
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				_, err := grpcsample.Hello(ctx, cc, fmt.Sprint("call-", i))
				cancel()
				s := status.Convert(err)
				mu.Lock()
				got[fmt.Sprintf("%v: %s", s.Code(), s.Message())]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) > 1 {
		t.Logf("statuses: %v", slices.Sorted(maps.Keys(got)))
	}
	return got
}

// TestStreamFlushesAtOnce: a server-streaming call's first message reaches
// the client through each proxy while the app still holds the second (the
// proxies flush every write of a body of unknown length), and the call
// then ends with its status.
func TestStreamFlushesAtOnce(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			ln := listen(t)
			s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error {
				if err := st.RecvMsg(new(wrapperspb.UInt32Value)); err != nil {
					return err
				}
				if err := st.SendMsg(wrapperspb.UInt32(1)); err != nil {
					return err
				}
				select {
				case <-release:
				case <-st.Context().Done():
					return st.Context().Err()
				}
				return st.SendMsg(wrapperspb.UInt32(2))
			}))
			go func() { _ = s.Serve(ln) }()
			t.Cleanup(s.Stop)
			d := front(t, r, ln.Addr().String())

			cc := testnet.GRPCClient(t, d.addr, grpc.WithAuthority(host))
			st, err := cc.NewStream(testnet.Within(t, requestTimeout), &grpc.StreamDesc{ServerStreams: true}, grpcsample.CountMethod)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SendMsg(wrapperspb.UInt32(2)); err != nil {
				t.Fatal(err)
			}
			if err := st.CloseSend(); err != nil {
				t.Fatal(err)
			}
			first := new(wrapperspb.UInt32Value)
			if err := st.RecvMsg(first); err != nil || first.GetValue() != 1 {
				t.Fatalf("first message while the app holds the second: %v, %v; want 1", first, err)
			}
			close(release)
			second := new(wrapperspb.UInt32Value)
			if err := st.RecvMsg(second); err != nil || second.GetValue() != 2 {
				t.Fatalf("second message: %v, %v; want 2", second, err)
			}
			if err := st.RecvMsg(new(wrapperspb.UInt32Value)); !errors.Is(err, io.EOF) {
				t.Errorf("end of the stream: %v, want io.EOF (status OK)", err)
			}
		})
	}
}
