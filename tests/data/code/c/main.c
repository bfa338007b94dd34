#include <stdio.h>
#include "shapes.h"

int main(void)
{
    shape_t *shapes[2] = { make_circle(1.0), make_circle(2.0) };
    printf("%.2f\n", total_area(shapes, 2));
    free(shapes[0]);
    return 0;
}
