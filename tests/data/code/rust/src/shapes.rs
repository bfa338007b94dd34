//! Shapes and their areas.
use std::fmt;

use crate::util::{square, Named as HasName};

/// The unit length.
pub const UNIT: f64 = 1.0;

/// Anything with an area.
pub trait Shape: HasName + fmt::Debug {
    fn area(&self) -> f64;

    fn describe(&self) -> String {
        format!("{}: {}", self.name(), self.area())
    }
}

/// A round shape.
#[derive(Debug, Clone)]
pub struct Circle {
    pub r: f64,
}

pub enum Kind {
    Round,
    Square(u32),
}

impl Circle {
    pub fn new(r: f64) -> Self {
        Circle { r }
    }
}

impl Shape for Circle {
    fn area(&self) -> f64 {
        std::f64::consts::PI * square(self.r)
    }
}

impl HasName for Circle {
    fn name(&self) -> String {
        String::from("circle")
    }
}
