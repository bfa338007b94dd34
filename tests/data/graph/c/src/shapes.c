#include <math.h>
#include "geo/shapes.h"

static double square(double x) { return x * x; }

double circle_area(double r) { return M_PI * square(r); }

double total(const double *areas, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += areas[i];
    return sum;
}
