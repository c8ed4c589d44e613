//! Command-line flags of the real-network commands (`tailcut-net`, `tailcut-testbed`): a flag is
//! configuration, so its errors are [`ConfigError`]s whose path is the flag (`--rate: cannot parse
//! 'x'`), reported the same way as an experiment file's fields. The commands take few flags and the
//! Python front builds their command lines, so a scan of `args` is all they need.

use crate::ConfigError;

/// The value of `--name` in `args`, parsed; `None` if the flag is absent.
pub fn value<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<T>, ConfigError> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            let v = args
                .get(i + 1)
                .ok_or_else(|| ConfigError::new(name, "missing value"))?;
            v.parse()
                .map(Some)
                .map_err(|_| ConfigError::new(name, format!("cannot parse '{v}'")))
        }
    }
}

/// Every value of a flag that may be repeated (`--param a=1 --param b=2`), in order.
pub fn values<'a>(args: &'a [String], name: &str) -> Result<Vec<&'a str>, ConfigError> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a == name {
            let v = args
                .get(i + 1)
                .ok_or_else(|| ConfigError::new(name, "missing value"))?;
            out.push(v.as_str());
        }
    }
    Ok(out)
}

/// Whether the switch `--name` (a flag without a value) is given.
pub fn present(args: &[String], name: &str) -> bool {
    args.iter().any(|a| a == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn values_parse_and_errors_name_the_flag() {
        let a = args("--rate 10 --param a=1 --dctcp --param b=2 --cc");
        assert_eq!(value::<u64>(&a, "--rate"), Ok(Some(10)));
        assert_eq!(value::<u64>(&a, "--seconds"), Ok(None));
        assert_eq!(values(&a, "--param"), Ok(vec!["a=1", "b=2"]));
        assert!(present(&a, "--dctcp") && !present(&a, "--fifo"));
        let e = value::<String>(&a, "--cc").unwrap_err();
        assert_eq!((e.path.as_str(), e.reason.as_str()), ("--cc", "missing value"));
        let e = value::<u64>(&args("--rate fast"), "--rate").unwrap_err();
        assert_eq!(e.to_string(), "--rate: cannot parse 'fast'");
        assert!(values(&args("--param"), "--param").is_err());
    }
}
