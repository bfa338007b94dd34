<?php

namespace App\Shapes;

abstract class Base
{
    public function name(): string
    {
        return static::class;
    }
}
