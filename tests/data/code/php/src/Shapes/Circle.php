<?php

declare(strict_types=1);

namespace App\Shapes;

use App\Contracts\Shape;
use App\Util\{Math, Str as S};

/**
 * A round shape.
 */
final class Circle extends AbstractShape implements Shape, \JsonSerializable
{
    use Named;

    public const SIDES = 0;

    public function __construct(private float $r)
    {
        parent::__construct('circle');
    }

    public function area(): float
    {
        return M_PI * Math::square($this->r);
    }

    public function jsonSerialize(): array
    {
        return ['name' => $this->name(), 'area' => $this->area()];
    }

    public static function unit(): self
    {
        return new self(1.0);
    }
}
