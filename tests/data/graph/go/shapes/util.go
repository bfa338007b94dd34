package shapes

func square(x float64) float64 {
	return x * x
}

func Total(items []Shape) float64 {
	sum := 0.0
	for _, s := range items {
		sum += s.Area()
	}
	return sum
}
