<?php

namespace App\Shapes;

interface Shape
{
    public function area(): float;
}
