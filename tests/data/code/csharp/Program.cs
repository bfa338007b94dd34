using System;
using System.Linq;
using Geo.Shapes;
using Shapes = Geo.Shapes;

namespace Geo;

public static class Program
{
    public static void Main(string[] args)
    {
        var circles = Circle.Many(3);
        Console.WriteLine(circles.Sum(c => c.Area()));
        Shapes.IShape s = new Shapes.Circle(1);
        Console.WriteLine(s.Area());
    }
}
