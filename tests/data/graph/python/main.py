import json

from shapes import Circle
from shapes.circle import square as sq


def total(items):
    return sum(s.area() for s in items)


def main():
    shapes = [Circle(2.0), Circle.unit()]
    print(json.dumps({"total": total(shapes), "four": sq(2)}))
    return shapes[0].describe()


if __name__ == "__main__":
    main()
