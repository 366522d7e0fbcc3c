module github.com/hotbudget/hotbudget

go 1.25.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/google/pprof v0.0.0-20260709232956-b9395ee17fa0
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/exp v0.0.0-20260813180055-c1d0aacb2297
	golang.org/x/perf v0.0.0-20260512194132-3cf34090a3db
	golang.org/x/sys v0.47.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)
