import Geo

let circle = Circle.unit()
print(circle.describe())
