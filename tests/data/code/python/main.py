import sys

import shapes


def main(argv=None):
    circles = [shapes.Round(float(a)) for a in (argv or sys.argv[1:])]
    print(sum(c.area() for c in circles))


if __name__ == "__main__":
    main()
