//! Empirical distributions read from the two-column text format many datacenter simulators share:
//! `value cumulative_probability` per line, `#` comments and blank lines ignored.
//!
//! # Interpretation
//! The points are joined by straight lines: the CDF is piecewise linear (the convention of the ns-2 / htsim
//! workload generators that use these files). A repeated value (`180 0` then `180 0.10`) is an atom: that
//! value has the probability step as its own mass. A first point with probability `p0 > 0` is an atom of
//! mass `p0` at the first value. Sampling is by inverse transform: draw `u` uniform in `[0, 1)` and read the
//! value off the polyline at probability `u`.
//!
//! Probabilities are fractions in `[0, 1]`; files written in percent must be converted (divide by 100).

use std::fmt;
use std::path::Path;
use tailcut_proto::rng::Rng;

/// Most points a CDF file may have. Shipped and published CDFs have tens to hundreds; a file of
/// millions is a mistake (a trace's raw samples) that would cost memory and loading time in every run
/// and every sweep point. docs/simulator.md, "Limits and errors".
pub const MAX_CDF_POINTS: usize = 100_000;

/// Tolerance on the last probability being exactly 1.
const LAST_PROBABILITY_TOLERANCE: f64 = 1e-9;

/// A CDF file that does not parse or does not describe a distribution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CdfError {
    /// The file (or builtin name) the text came from.
    pub source_name: String,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for CdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{} line {}: {}", self.source_name, l, self.message),
            None => write!(f, "{}: {}", self.source_name, self.message),
        }
    }
}

impl std::error::Error for CdfError {}

/// A piecewise-linear CDF over arbitrary real values (flow sizes, loss rates, ...).
///
/// Internally the polyline always starts at probability 0 (an atom at the first value is stored as a
/// vertical first segment) and ends at exactly 1.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalCdf {
    /// (value, cumulative probability), values and probabilities non-decreasing.
    points: Vec<(f64, f64)>,
}

impl EmpiricalCdf {
    /// Parses the two-column format. `source_name` is used in error messages only.
    pub fn parse(text: &str, source_name: &str) -> Result<EmpiricalCdf, CdfError> {
        // Spreadsheet exports begin with a UTF-8 byte order mark, which is not whitespace to `split`.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let err = |line: Option<usize>, message: String| CdfError {
            source_name: source_name.to_string(),
            line,
            message,
        };
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            if points.len() >= MAX_CDF_POINTS {
                return Err(err(
                    Some(line_no),
                    format!(
                        "more than {MAX_CDF_POINTS} points; a CDF this fine only costs memory and \
                         loading time (thin it: a few hundred points describe any distribution)"
                    ),
                ));
            }
            let cols: Vec<&str> = content.split_whitespace().collect();
            if cols.len() != 2 {
                return Err(err(
                    Some(line_no),
                    format!(
                        "expected 2 columns (value cumulative_probability), found {}: '{content}'",
                        cols.len()
                    ),
                ));
            }
            let parse = |s: &str, what: &str| -> Result<f64, CdfError> {
                match s.parse::<f64>() {
                    Ok(v) if v.is_finite() => Ok(v),
                    _ => Err(err(Some(line_no), format!("{what} '{s}' is not a finite number"))),
                }
            };
            let value = parse(cols[0], "value")?;
            let p = parse(cols[1], "probability")?;
            if !(0.0..=1.0).contains(&p) {
                return Err(err(
                    Some(line_no),
                    format!(
                        "probability {p} is outside [0, 1]; probabilities must be fractions \
                         (convert a percent file by dividing the second column by 100)"
                    ),
                ));
            }
            if let Some(&(pv, pp)) = points.last() {
                if value < pv {
                    return Err(err(
                        Some(line_no),
                        format!(
                            "value {value} is smaller than the previous value {pv}; values must not decrease"
                        ),
                    ));
                }
                if p < pp {
                    return Err(err(
                        Some(line_no),
                        format!("probability {p} is smaller than the previous probability {pp}; a CDF must not decrease"),
                    ));
                }
            }
            points.push((value, p));
            last_line = line_no;
        }
        if points.len() < 2 {
            return Err(err(
                None,
                format!("needs at least 2 points, found {}", points.len()),
            ));
        }
        let last_p = points[points.len() - 1].1;
        if (last_p - 1.0).abs() > LAST_PROBABILITY_TOLERANCE {
            return Err(err(
                Some(last_line),
                format!("the last probability must be 1, got {last_p}"),
            ));
        }
        let n = points.len();
        points[n - 1].1 = 1.0;
        if points[0].1 > 0.0 {
            points.insert(0, (points[0].0, 0.0));
        }
        Ok(EmpiricalCdf { points })
    }

    /// Reads and parses a file.
    pub fn from_file(path: &Path) -> Result<EmpiricalCdf, CdfError> {
        let name = path.display().to_string();
        let text = crate::limits::read_regular_file(path).map_err(|e| CdfError {
            source_name: name.clone(),
            line: None,
            message: format!("cannot read: {e}"),
        })?;
        EmpiricalCdf::parse(&text, &name)
    }

    /// The loss rates of FUSO's lossy links ([`FUSO_LOSS_CDF`], values are fractions in [0.01, 0.60]).
    pub fn fuso_loss_rates() -> EmpiricalCdf {
        EmpiricalCdf::parse(FUSO_LOSS_CDF, "builtin 'fuso-loss'").expect("the shipped file is valid")
    }

    /// The polyline's points (value, cumulative probability), starting at probability 0.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    pub fn min_value(&self) -> f64 {
        self.points[0].0
    }

    pub fn max_value(&self) -> f64 {
        self.points[self.points.len() - 1].0
    }

    /// The value at probability `u` in `[0, 1]` (inverse CDF, linear between points).
    pub fn quantile(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let pts = &self.points;
        // First point whose probability exceeds u; the point before it has probability <= u.
        let i = pts.partition_point(|&(_, p)| p <= u);
        if i == 0 {
            return pts[0].0;
        }
        if i >= pts.len() {
            return pts[pts.len() - 1].0;
        }
        let (x0, p0) = pts[i - 1];
        let (x1, p1) = pts[i];
        x0 + (u - p0) / (p1 - p0) * (x1 - x0)
    }

    /// The cumulative probability at `x` (right-continuous: includes an atom at `x`).
    pub fn cdf(&self, x: f64) -> f64 {
        let pts = &self.points;
        let i = pts.partition_point(|&(v, _)| v <= x);
        if i == 0 {
            return 0.0;
        }
        if i >= pts.len() {
            return 1.0;
        }
        let (x0, p0) = pts[i - 1];
        let (x1, p1) = pts[i];
        p0 + (x - x0) / (x1 - x0) * (p1 - p0)
    }

    /// One draw by inverse transform.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        self.quantile(super::draw::unit_f64(rng))
    }

    /// The exact mean of the piecewise-linear distribution: each segment contributes its probability
    /// step times the midpoint of its values (uniform within a segment; an atom is a zero-width segment).
    pub fn mean(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0)
            .sum()
    }

    /// The distribution conditioned on the value lying in `[min, max]` (either bound optional).
    ///
    /// The polyline is clipped to `min <= value <= max` and its probabilities are renormalised to span
    /// `[0, 1]`: within the range the shape is unchanged, outside it there is no mass. An atom exactly at a
    /// bound is kept. Errors if the range holds no probability mass.
    pub fn truncated(&self, min: Option<f64>, max: Option<f64>) -> Result<EmpiricalCdf, String> {
        let lo = min.unwrap_or(f64::NEG_INFINITY);
        let hi = max.unwrap_or(f64::INFINITY);
        if lo > hi {
            return Err(format!("empty range: min {lo} > max {hi}"));
        }
        let mut clipped: Vec<(f64, f64)> = Vec::new();
        let mut push = |pt: (f64, f64)| {
            if clipped.last() != Some(&pt) {
                clipped.push(pt);
            }
        };
        for w in self.points.windows(2) {
            let ((x0, p0), (x1, p1)) = (w[0], w[1]);
            if x1 < lo || x0 > hi {
                continue;
            }
            let at = |x: f64| {
                if x1 == x0 {
                    p0
                } else {
                    p0 + (x - x0) / (x1 - x0) * (p1 - p0)
                }
            };
            let (a, b) = (x0.max(lo), x1.min(hi));
            let pa = if x0 >= lo { p0 } else { at(a) };
            let pb = if x1 <= hi { p1 } else { at(b) };
            push((a, pa));
            push((b, pb));
        }
        let (first, last) = match (clipped.first(), clipped.last()) {
            (Some(f), Some(l)) => (f.1, l.1),
            _ => (0.0, 0.0),
        };
        let mass = last - first;
        if clipped.len() < 2 || mass <= 0.0 {
            return Err(format!(
                "the range [{lo}, {hi}] holds no probability mass (distribution spans [{}, {}])",
                self.min_value(),
                self.max_value()
            ));
        }
        let mut points: Vec<(f64, f64)> = clipped
            .into_iter()
            .map(|(x, p)| (x, ((p - first) / mass).clamp(0.0, 1.0)))
            .collect();
        let n = points.len();
        points[0].1 = 0.0;
        points[n - 1].1 = 1.0;
        Ok(EmpiricalCdf { points })
    }
}

/// Flow-size distributions shipped with tailcut, by builtin name.
pub const BUILTIN_FLOW_SIZE_CDFS: &[(&str, &str)] = &[
    // Web search, Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, Fig. 4.
    ("websearch", include_str!("../../../../workloads/websearch.cdf")),
    // Data mining, Greenberg et al., "VL2", SIGCOMM 2009, Fig. 2.
    ("datamining", include_str!("../../../../workloads/datamining.cdf")),
];

/// Loss rates of FUSO's measured lossy links (constructed; see the file's comments).
pub const FUSO_LOSS_CDF: &str = include_str!("../../../../workloads/fuso-loss.cdf");

/// A flow-size distribution in bytes: an [`EmpiricalCdf`] whose values are sizes >= 0.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSizeCdf {
    cdf: EmpiricalCdf,
}

impl FlowSizeCdf {
    /// `"websearch"` or `"datamining"` load the shipped copies; any other string is a file path.
    pub fn load(name_or_path: &str) -> Result<FlowSizeCdf, CdfError> {
        match BUILTIN_FLOW_SIZE_CDFS.iter().find(|(n, _)| *n == name_or_path) {
            Some((name, text)) => FlowSizeCdf::parse(text, &format!("builtin '{name}'")),
            None => FlowSizeCdf::from_cdf(EmpiricalCdf::from_file(Path::new(name_or_path))?, name_or_path),
        }
    }

    pub fn parse(text: &str, source_name: &str) -> Result<FlowSizeCdf, CdfError> {
        FlowSizeCdf::from_cdf(EmpiricalCdf::parse(text, source_name)?, source_name)
    }

    fn from_cdf(cdf: EmpiricalCdf, source_name: &str) -> Result<FlowSizeCdf, CdfError> {
        if cdf.min_value() < 0.0 {
            return Err(CdfError {
                source_name: source_name.to_string(),
                line: None,
                message: format!("flow sizes must be >= 0 bytes, found {}", cdf.min_value()),
            });
        }
        let max = crate::limits::MAX_FLOW_BYTES;
        if cdf.max_value() > max as f64 {
            return Err(CdfError {
                source_name: source_name.to_string(),
                line: None,
                message: format!(
                    "flow sizes must be at most 1PB ({max} bytes), found {:e}",
                    cdf.max_value()
                ),
            });
        }
        if cdf.max_value() == 0.0 {
            return Err(CdfError {
                source_name: source_name.to_string(),
                line: None,
                message: "every flow size is 0 bytes; a flow carries at least 1 byte".into(),
            });
        }
        Ok(FlowSizeCdf { cdf })
    }

    /// Conditioned on `min_bytes <= size <= max_bytes` (see [`EmpiricalCdf::truncated`]). The papers'
    /// "small flows < 100 KB" is `max_bytes = 100_000`: the bound's own probability is zero unless the file
    /// has an atom there.
    pub fn truncated(&self, min_bytes: Option<u64>, max_bytes: Option<u64>) -> Result<FlowSizeCdf, String> {
        Ok(FlowSizeCdf {
            cdf: self
                .cdf
                .truncated(min_bytes.map(|b| b as f64), max_bytes.map(|b| b as f64))?,
        })
    }

    pub fn cdf(&self) -> &EmpiricalCdf {
        &self.cdf
    }

    /// Exact mean of the piecewise-linear distribution, in bytes (before rounding samples to whole bytes).
    pub fn mean_bytes(&self) -> f64 {
        self.cdf.mean()
    }

    /// One flow size: the continuous draw rounded to the nearest byte, at least 1 byte (a flow carries
    /// data; the web-search file starts at 0 bytes, and the clamp moves a mass of 1.5e-5 by < 1 byte).
    pub fn sample_bytes(&self, rng: &mut Rng) -> u64 {
        (self.cdf.sample(rng).round() as u64).max(1)
    }
}

#[cfg(test)]
mod too_many_points {
    use super::*;

    #[test]
    fn a_cdf_of_more_than_max_points_is_refused() {
        let n = MAX_CDF_POINTS + 1;
        let text: String = (1..=n)
            .map(|i| format!("{i} {}\n", i as f64 / n as f64))
            .collect();
        let e = EmpiricalCdf::parse(&text, "big.cdf").unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("more than {MAX_CDF_POINTS} points")),
            "{e}"
        );
        let ok: String = (1..MAX_CDF_POINTS)
            .map(|i| format!("{i} {}\n", i as f64 / (MAX_CDF_POINTS - 1) as f64))
            .collect();
        assert!(EmpiricalCdf::parse(&ok, "ok.cdf").is_ok());
    }
}
