package main

import (
	"fmt"

	geo "example.com/geo/shapes"
)

func main() {
	c := geo.NewCircle(2)
	fmt.Println(geo.Total([]geo.Shape{c}))
}
