package main

import (
	"fmt"
	sh "example.com/geo/shapes"
)

func main() {
	c := sh.NewCircle(2)
	fmt.Println(c, sh.Total([]sh.Shape{c}))
}
