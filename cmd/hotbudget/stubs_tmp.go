package main

func (c *cli) diff(args []string) int  { return 0 }
func (c *cli) bench(args []string) int { return 0 }
func (c *cli) check(args []string) int { return 0 }
