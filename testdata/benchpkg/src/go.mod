module example.com/parsers

go 1.26
