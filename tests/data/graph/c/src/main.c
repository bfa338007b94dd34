#include <stdio.h>
#include "geo/shapes.h"

int main(void)
{
    double areas[2] = { circle_area(1.0), circle_area(2.0) };
    printf("%f\n", total(areas, 2));
    return 0;
}
