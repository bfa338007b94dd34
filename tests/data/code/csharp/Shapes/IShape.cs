namespace Geo.Shapes
{
    /// <summary>Anything with an area.</summary>
    public interface IShape : INamed
    {
        double Area();
    }
}
