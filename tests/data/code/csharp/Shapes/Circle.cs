using System;
using System.Collections.Generic;
using static System.Math;

namespace Geo.Shapes
{
    /// <summary>A round shape.</summary>
    public class Circle : ShapeBase, IShape, IComparable<Circle>
    {
        public const double MaxRadius = 1e6;

        private readonly double _r;

        public Circle(double r) : base("circle")
        {
            _r = r;
        }

        public override double Area() => PI * Util.Square(_r);

        public int CompareTo(Circle other) => Area().CompareTo(other.Area());

        public static List<Circle> Many(int n)
        {
            var list = new List<Circle>();
            for (var i = 1; i <= n; i++)
            {
                list.Add(new Circle(i));
            }
            return list;
        }
    }

    public struct Point : IEquatable<Point>
    {
        public int X;
        public bool Equals(Point other) => X == other.X;
    }

    public enum Kind { Small, Large }
}
