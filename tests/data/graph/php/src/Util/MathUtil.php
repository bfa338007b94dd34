<?php

namespace App\Util;

final class MathUtil
{
    public static function square(float $x): float
    {
        return $x * $x;
    }
}
