use crate::shapes::{Circle, Shape};

pub fn square(x: f64) -> f64 {
    x * x
}

pub fn total(items: &[Circle]) -> f64 {
    items.iter().map(|c| c.area()).sum()
}
