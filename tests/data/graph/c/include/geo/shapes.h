#ifndef GEO_SHAPES_H
#define GEO_SHAPES_H

double circle_area(double r);
double total(const double *areas, int n);

#endif
