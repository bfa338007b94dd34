namespace Geo.Util
{
    public static class MathUtil
    {
        public static double Square(double x) => x * x;
    }
}
