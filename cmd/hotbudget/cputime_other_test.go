//go:build !unix

package main

func selfCPU() int64 { return 0 }
