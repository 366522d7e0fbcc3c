package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the signals on which record stops its children, removes
// its worktrees and temporary files, and exits: Ctrl-C (SIGINT), a CI
// cancellation or timeout(1) (SIGTERM), a closed terminal or SSH session
// (SIGHUP).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalContext returns a context that is cancelled when one of
// stopSignals arrives, and stop, which stops listening (later signals have
// their default effect again) and returns the signal that arrived, or nil.
func signalContext(parent context.Context) (ctx context.Context, stop func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	got := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() {
		defer close(got)
		select {
		case s := <-ch:
			got <- s
			cancel()
		case <-done:
		}
	}()
	return ctx, func() os.Signal {
		signal.Stop(ch)
		close(done)
		cancel()
		return <-got
	}
}

// signalExit is the conventional exit status of a command stopped by s:
// 128 plus the signal's number (130 for SIGINT, 143 for SIGTERM, 129 for
// SIGHUP), as shells report it.
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitUsage
}
