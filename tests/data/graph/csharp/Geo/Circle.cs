using System;
using Geo.Util;

namespace Geo
{
    public abstract class ShapeBase : IShape
    {
        public abstract double Area();

        public string Describe() => $"area {Area()}";
    }

    public class Circle : ShapeBase
    {
        private readonly double r;

        public Circle(double r)
        {
            this.r = r;
        }

        public override double Area() => Math.PI * MathUtil.Square(r);

        public static Circle Unit() => new Circle(1.0);
    }
}
