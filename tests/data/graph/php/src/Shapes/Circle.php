<?php

namespace App\Shapes;

use App\Util\MathUtil;

class Circle extends Base implements Shape
{
    public function __construct(private float $r)
    {
    }

    public function area(): float
    {
        return M_PI * MathUtil::square($this->r);
    }

    public function describe(): string
    {
        return $this->name() . ': ' . $this->area();
    }
}
