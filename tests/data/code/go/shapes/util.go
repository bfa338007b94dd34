package shapes

import "sort"

// ByArea sorts shapes by area.
type ByArea []Shape

// Square returns x squared.
func Square(x float64) float64 { return x * x }

// Total sums the areas.
func Total(shapes []Shape) (sum float64) {
	sort.Sort(ByArea(shapes))
	for _, s := range shapes {
		sum += s.Area()
	}
	return sum
}

func (a ByArea) Len() int           { return len(a) }
func (a ByArea) Less(i, j int) bool { return a[i].Area() < a[j].Area() }
func (a ByArea) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
