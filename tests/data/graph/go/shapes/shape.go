package shapes

import (
	"fmt"
	"math"
)

type Shape interface {
	Area() float64
}

type Circle struct {
	R float64
}

func NewCircle(r float64) *Circle {
	return &Circle{R: r}
}

func (c *Circle) Area() float64 {
	return math.Pi * square(c.R)
}

func (c *Circle) String() string {
	return fmt.Sprintf("circle %.1f", c.Area())
}
