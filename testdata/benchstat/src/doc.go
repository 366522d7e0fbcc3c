// Package codec is only benchmarks: see codec_test.go.
package codec
