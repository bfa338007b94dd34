<?php

namespace App\Contracts;

interface Shape extends \Countable
{
    public function area(): float;
}

trait Named
{
    public function name(): string
    {
        return strtolower((new \ReflectionClass($this))->getShortName());
    }
}
