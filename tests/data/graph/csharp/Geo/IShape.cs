namespace Geo
{
    public interface IShape
    {
        double Area();
    }
}
