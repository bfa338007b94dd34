using System;
using Geo;

namespace App
{
    public static class Program
    {
        public static void Main()
        {
            var c = Circle.Unit();
            Console.WriteLine(c.Describe());
        }
    }
}
