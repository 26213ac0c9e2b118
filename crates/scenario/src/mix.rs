//! Several scenario files as one mix, as pgbench's `-f browse.sql@7 -f buy.sql@3`: each file's
//! steps become a flow of one scenario, picked by the file's weight.

use std::collections::btree_map::Entry;
use std::path::Path;

use serde_saphyr::{Location, Spanned};
use throng_core::step::Protocols;

use crate::compile::{compile_file, parse, read, ScenarioError};
use crate::file::{File, Flow, YamlNode};
use crate::Scenario;

fn placeless<T>(value: T) -> Spanned<T> {
    Spanned::new(value, Location::UNKNOWN, Location::UNKNOWN)
}

/// Compiles the files of a mix, each with its weight, into one scenario: each file is a flow
/// named by its file name (without `.yaml`), its steps and groups keep their rows, and its
/// `on_failure` holds for its steps. Targets, variables and data of the same name must agree;
/// the load section, the seed and goodput are the first file's (that gives them), thresholds and containers every
/// file's. Each file is compiled on its own first, so a mistake names its own file and place.
pub fn load_mix(parts: &[(&Path, u32)], protocols: &Protocols) -> Result<Scenario, ScenarioError> {
    let mut mix: Option<File> = None;
    let mut names = Vec::new();
    let mut flows = Vec::new();
    for (path, weight) in parts {
        crate::load(path, protocols)?;
        let (text, name) = read(path)?;
        let mut f = parse(&text, &name)?;
        let refuse = |message: String| ScenarioError::Read {
            file: name.clone(),
            message,
        };
        if *weight == 0 {
            return Err(refuse(
                "a weight is a whole number from 1 to 1000000, not 0".into(),
            ));
        }
        let Some(mut steps) = f.steps.take() else {
            return Err(refuse(
                "a file of a mix holds `steps` (it is one flow of the mix), not `flows`".into(),
            ));
        };
        for item in steps.value.iter_mut() {
            item.value.on_failure.get_or_insert(placeless(f.on_failure));
        }
        // A data file is relative to its scenario file.
        let dir = path.parent().unwrap_or(Path::new(""));
        for src in f.data.values_mut() {
            src.value.file = dir.join(&src.value.file).display().to_string();
        }
        let stem = path
            .file_stem()
            .map_or(name.clone(), |s| s.to_string_lossy().into());
        flows.push(placeless(Flow {
            flow: placeless(stem),
            weight: placeless(YamlNode::Number((*weight).into())),
            steps,
        }));
        names.push(name.clone());
        let Some(m) = mix.as_mut() else {
            mix = Some(f);
            continue;
        };
        for (k, url) in f.targets {
            match m.targets.entry(k) {
                Entry::Occupied(o) if o.get().value != url.value => {
                    return Err(refuse(format!(
                        "target `{}` is {} here and {} in an earlier file of the mix",
                        o.key(),
                        url.value,
                        o.get().value
                    )))
                }
                Entry::Occupied(_) => {}
                Entry::Vacant(v) => {
                    v.insert(url);
                }
            }
        }
        for (k, value) in f.variables {
            match m.variables.get(&k) {
                Some(v) if *v != value => {
                    return Err(refuse(format!(
                        "variable `{k}` is {value} here and {v} in an earlier file of the mix"
                    )))
                }
                _ => {
                    m.variables.insert(k, value);
                }
            }
        }
        for (k, src) in f.data {
            match m.data.get(&k) {
                Some(d) if d.value.file != src.value.file => {
                    return Err(refuse(format!(
                        "data `{k}` is {} here and {} in an earlier file of the mix",
                        src.value.file, d.value.file
                    )))
                }
                _ => {
                    m.data.insert(k, src);
                }
            }
        }
        m.thresholds.extend(f.thresholds);
        if m.goodput.is_none() {
            m.goodput = f.goodput;
        }
        for c in f.containers {
            if !m.containers.contains(&c) {
                m.containers.push(c);
            }
        }
    }
    let Some(mut m) = mix else {
        return Err(ScenarioError::Built {
            name: "mix".into(),
            message: "a mix needs at least one file".into(),
        });
    };
    m.flows = Some(placeless(flows));
    compile_file(m, &names.join(" + "), Path::new(""), false, protocols)
}
