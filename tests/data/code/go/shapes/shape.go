// Package shapes computes areas.
package shapes

import (
	"fmt"
	"math"
)

// Unit is the unit length.
const Unit = 1.0

// Shape is anything with an area.
type Shape interface {
	fmt.Stringer
	Area() float64
}

// Base holds a name.
type Base struct {
	Name string
}

// Circle is a round shape.
type Circle struct {
	Base
	R float64
}

// NewCircle makes a circle.
func NewCircle(r float64) *Circle {
	return &Circle{Base: Base{Name: "circle"}, R: r}
}

// Area is pi r squared.
func (c *Circle) Area() float64 {
	return math.Pi * Square(c.R)
}

func (c Circle) String() string {
	return fmt.Sprintf("%s(%v)", c.Name, c.R)
}
