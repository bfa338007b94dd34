<?php

require_once __DIR__ . '/../vendor/autoload.php';

use App\Shapes\Circle;

const UNIT = 1.0;

function total(array $shapes): float
{
    return array_sum(array_map(fn ($s) => $s->area(), $shapes));
}

$shapes = [new Circle(2.0), Circle::unit()];
echo json_encode($shapes), PHP_EOL, total($shapes);
