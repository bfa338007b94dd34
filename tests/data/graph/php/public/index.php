<?php

require __DIR__ . '/../vendor/autoload.php';

use App\Shapes\Circle;

function main(): void
{
    $circle = new Circle(2.0);
    echo json_encode(['text' => $circle->describe()]);
}

main();
