//! A port's parameters matched to its Burn module, with no per-model code: the module's
//! float tensors collected by burn-store (`ModuleSnapshot::collect`: each one's Burn path,
//! shape and parameter id), each PyTorch name of the spec's `port.params` and `port.buffers`
//! (a BatchNorm's running statistics, Burn's `RunningState`s) taken to its Burn path as
//! burn-store's load takes it (the user's `pytorch_keys` remapping, then the
//! `PyTorchToBurnAdapter`'s rules: a norm's `weight`/`bias` are its `gamma`/`beta`, a
//! Linear's weight is held transposed, [in, out]).
//!
//! Each refusal is one line a porter can act on: a PyTorch parameter with no Burn parameter
//! (listing the Burn parameters left unmatched), one whose Burn parameter has another shape
//! (both sides' names and shapes, and whether a transpose or a split into equal row blocks
//! would fit), a parameter that is a Burn buffer or the reverse, a Burn parameter no PyTorch
//! parameter maps to, and a Burn BatchNorm whose running statistics the weights file lacks.

use std::collections::HashMap;

use burn::module::{Module, ParamId};
use burn::store::{KeyRemapper, ModuleSnapshot, PathFilter};

use crate::config::PortDecl;
use crate::models::{Entry, Layout};

/// The container types whose `weight`/`bias` burn-store's adapter takes for `gamma`/`beta`
/// (burn-store src/adapter.rs, `is_normalization_layer`).
const NORMS: [&str; 4] = [
    "Struct:BatchNorm",
    "Struct:LayerNorm",
    "Struct:GroupNorm",
    "Struct:RmsNorm",
];

/// The innermost container type of a tensor (its module's), from burn-store's container
/// path (the container types from the root, joined by dots).
fn container(container_path: &str) -> &str {
    container_path.rsplit('.').next().unwrap_or("")
}

/// burn-store's filter of a Linear's weight, as the adapter transposes it (and as the
/// trainer's load leaves it to the arrays, models/store.rs).
fn linear_weight(path: &str, container_path: &str) -> bool {
    container(container_path) == "Struct:Linear" && path.ends_with(".weight")
}

/// burn-store's filter of a norm's tensors.
fn in_norm(_path: &str, container_path: &str) -> bool {
    NORMS.contains(&container(container_path))
}

/// A BatchNorm's running statistics: buffers, which burn-store collects beside the
/// parameters (a `RunningState` visits as a parameter with an id of its own).
fn running_state(path: &str, container_path: &str) -> bool {
    container(container_path) == "Struct:BatchNorm"
        && (path.ends_with(".running_mean") || path.ends_with(".running_var"))
}

/// How one PyTorch array maps to the Burn tensors that hold it, where burn-store's rules
/// do not say (a port declares it in [`Port::mappings`](super::Port::mappings)), Burn paths
/// as burn-store collects them (`h.0.attn.c_attn.weight`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// Held as PyTorch holds it, no transpose: GPT-2's `Conv1D` weight, [in, out], in a Burn
    /// Linear (which holds [in, out] too).
    AsIs(String),
    /// Held transposed (a 2-D array): what burn-store does for a Linear's weight, for
    /// another module.
    Transposed(String),
    /// PyTorch's rows (its first dimension) cut into `parts.len()` equal blocks, block k held
    /// by the Burn tensor at `parts[k]`, each transposed or not: nn.MultiheadAttention's
    /// `in_proj_weight` [3d, d] as Burn's query, key and value Linears (transposed), its
    /// `in_proj_bias` [3d] as their biases (not).
    SplitRows { parts: Vec<String>, transpose: bool },
}

/// One float tensor of the Burn module (its id is read by [`ids_at`]).
#[derive(Debug, Clone)]
pub(crate) struct BurnTensor {
    /// Its Burn module path.
    pub path: String,
    /// Its shape in Burn.
    pub shape: Vec<usize>,
    /// How Burn holds PyTorch's array: a Linear's weight transposed, the rest the same.
    pub layout: Layout,
    /// The name burn-store's load matches a PyTorch key against (after the remapping): the
    /// path, with a norm's `gamma`/`beta` as `weight`/`bias`.
    pub key: String,
    /// A buffer (a BatchNorm's running statistic), not a parameter.
    pub buffer: bool,
}

/// The module's float tensors (parameters, and its BatchNorms' running statistics), in the
/// module's order.
pub(crate) fn burn_tensors<M: Module>(module: &M) -> Vec<BurnTensor> {
    let paths = |filter: fn(&str, &str) -> bool| -> Vec<String> {
        module
            .collect(Some(PathFilter::new().with_predicate(filter)), None, false)
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    let (linear, norms, buffers) = (paths(linear_weight), paths(in_norm), paths(running_state));
    module
        .collect(None, None, false)
        .into_iter()
        .filter(|t| t.dtype.is_float())
        .map(|t| {
            let layout = if linear.contains(&t.name) && t.shape.len() == 2 {
                Layout::Transposed
            } else {
                Layout::Same
            };
            let key = match t.name.rsplit_once('.') {
                Some((module, "gamma")) if norms.contains(&t.name) => format!("{module}.weight"),
                Some((module, "beta")) if norms.contains(&t.name) => format!("{module}.bias"),
                _ => t.name.clone(),
            };
            BurnTensor {
                shape: t.shape.to_vec(),
                buffer: buffers.contains(&t.name),
                path: t.name,
                layout,
                key,
            }
        })
        .collect()
}

/// A PyTorch name through the user's remapping, as burn-store's `KeyRemapper::remap` takes
/// it: each pattern in turn, replacing every match.
fn remap(name: &str, keys: &KeyRemapper) -> String {
    let mut name = name.to_string();
    for (pattern, replacement) in keys.to_regex_pairs() {
        if pattern.is_match(&name) {
            name = pattern.replace_all(&name, replacement.as_str()).to_string();
        }
    }
    name
}

/// A port's parameters and buffers matched: the trainer's entries (PyTorch names and
/// shapes, Burn's layout, parts), with the Burn path of each part (one for most; one per
/// block of a split), in `port.params` and `port.buffers` order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    pub entries: Vec<Entry>,
    pub paths: Vec<String>,
    pub buffers: Vec<Entry>,
    pub buffer_paths: Vec<String>,
}

/// `shape` in PyTorch's layout, from Burn's `layout` (an involution).
fn other_layout(shape: &[usize], layout: Layout) -> Vec<usize> {
    match layout {
        Layout::Same => shape.to_vec(),
        Layout::Transposed => shape.iter().rev().copied().collect(),
    }
}

fn shown(shape: &[usize]) -> String {
    format!("{shape:?}")
}

/// What would fit a Burn parameter of `burn` (Burn's shape, held in `layout`) for PyTorch's
/// `torch`: a transpose, or a split of PyTorch's rows into k equal blocks (a packed array).
fn hint(torch: &[usize], burn: &[usize], layout: Layout) -> String {
    let transposed: Vec<usize> = torch.iter().rev().copied().collect();
    if torch.len() == 2 && burn == transposed.as_slice() {
        return "a transpose would fit (Burn transposes only a Linear's weight: declare it in Port::mappings, Mapping::Transposed or Mapping::AsIs)".into();
    }
    let block = other_layout(burn, layout);
    if block.len() == torch.len()
        && !block.is_empty()
        && block[0] > 0
        && block[1..] == torch[1..]
        && torch[0].is_multiple_of(block[0])
        && torch[0] > block[0]
    {
        return format!(
            "a split into {} equal row blocks would fit (a packed array, e.g. a qkv projection: declare it in Port::mappings, Mapping::SplitRows)",
            torch[0] / block[0]
        );
    }
    "neither a transpose nor a split into equal row blocks would fit".into()
}

/// A Linear built with in and out swapped, named before any other mismatch: its bias's
/// shape would otherwise be the first to differ (safetensors files list `bias` before
/// `weight`), read as a packed array. Burn's Linear holds [in, out], so a weight whose Burn
/// shape is PyTorch's own [out, in] (not square) was built `LinearConfig::new(out, in)`.
fn swapped(name: &str, params: &[(String, Vec<usize>)], tensors: &[BurnTensor]) -> Option<String> {
    params.iter().find_map(|(key, shape)| {
        let t = tensors.iter().find(|t| &t.key == key)?;
        let module = t.path.strip_suffix(".weight")?;
        (t.layout == Layout::Transposed && t.shape == *shape && shape[0] != shape[1]).then(|| {
            format!(
                "port {name}: Burn's Linear {module} is built with in and out swapped: its weight is {} where PyTorch's {key} {} needs {} (Burn's Linear holds [in, out]); build it LinearConfig::new({}, {})",
                shown(&t.shape),
                shown(shape),
                shown(&[shape[1], shape[0]]),
                shape[1],
                shape[0]
            )
        })
    })
}

/// Matches `port`'s parameters and buffers to `module`'s float tensors through `keys` (the
/// port's `pytorch_keys`); one line on a Linear built with in and out swapped, else on the
/// first that does not match (a parameter that is a Burn buffer, or the reverse), or a Burn
/// tensor left unmatched.
pub(crate) fn resolve<M: Module>(
    port: &PortDecl,
    module: &M,
    keys: &[(String, String)],
    mappings: &[(String, Mapping)],
) -> Result<Resolved, String> {
    let name = &port.name;
    for (torch, _) in mappings {
        if !port.params.iter().any(|p| &p.name == torch) {
            return Err(format!(
                "port {name}: Port::mappings names {torch}, which is no PyTorch parameter of the weights file ({})",
                port.params
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let keys = KeyRemapper::from_patterns(keys.to_vec())
        .map_err(|e| format!("port {name}: pytorch_keys: {}", one_line(&e.to_string())))?;
    let tensors = burn_tensors(module);
    // A parameter the port maps itself is not a Linear built the wrong way round.
    let keyed: Vec<(String, Vec<usize>)> = port
        .params
        .iter()
        .filter(|p| !mappings.iter().any(|(torch, _)| torch == &p.name))
        .map(|p| (remap(&p.name, &keys), p.shape.clone()))
        .collect();
    if let Some(refusal) = swapped(name, &keyed, &tensors) {
        return Err(refusal);
    }
    let mut owner: HashMap<usize, &str> = HashMap::new();
    let mut resolved = Resolved {
        entries: Vec::with_capacity(port.params.len()),
        paths: Vec::with_capacity(port.params.len()),
        buffers: Vec::with_capacity(port.buffers.len()),
        buffer_paths: Vec::with_capacity(port.buffers.len()),
    };
    let declared = port.params.iter().map(|p| (p, false));
    for (p, is_buffer) in declared.chain(port.buffers.iter().map(|p| (p, true))) {
        if let Some((_, mapping)) = mappings.iter().find(|(torch, _)| torch == &p.name) {
            let (entry, paths) = mapped(name, p, mapping, &tensors, &mut owner)?;
            resolved.entries.push(entry);
            resolved.paths.extend(paths);
            continue;
        }
        let what = if is_buffer { "buffer" } else { "parameter" };
        let key = remap(&p.name, &keys);
        let renamed = if key == p.name {
            String::new()
        } else {
            format!(" (as {key} after pytorch_keys)")
        };
        let Some(i) = tensors.iter().position(|t| t.key == key) else {
            let left: Vec<String> = tensors
                .iter()
                .enumerate()
                .filter(|(i, t)| !owner.contains_key(i) && !port_maps_to(port, &keys, &t.key))
                .map(|(_, t)| format!("{} {}", t.path, shown(&t.shape)))
                .collect();
            let left = if left.is_empty() {
                "none".to_string()
            } else {
                left.join(", ")
            };
            return Err(format!(
                "port {name}: PyTorch {what} {} {}{renamed} has no Burn {what}; Burn {what}s left unmatched: {left}",
                p.name,
                shown(&p.shape)
            ));
        };
        let t = &tensors[i];
        if t.buffer != is_buffer {
            let found = if t.buffer {
                "BatchNorm running statistic (a buffer, which training does not update)"
            } else {
                "parameter (which training updates; a running statistic is a BatchNorm's RunningState)"
            };
            return Err(format!(
                "port {name}: PyTorch {what} {}{renamed} maps to Burn's {found} {}",
                p.name, t.path
            ));
        }
        if let Some(first) = owner.insert(i, &p.name) {
            return Err(format!(
                "port {name}: PyTorch {what}s {first} and {}{renamed} both map to Burn's {}",
                p.name, t.path
            ));
        }
        let want = other_layout(&p.shape, t.layout);
        if t.shape != want {
            let expected = match t.layout {
                Layout::Same => format!("expected {}", shown(&want)),
                Layout::Transposed => format!(
                    "expected {}: a Linear's weight is PyTorch's transposed",
                    shown(&want)
                ),
            };
            return Err(format!(
                "port {name}: PyTorch {what} {} {}{renamed} does not fit Burn {what} {} {} ({expected}); {}",
                p.name,
                shown(&p.shape),
                t.path,
                shown(&t.shape),
                hint(&p.shape, &t.shape, t.layout)
            ));
        }
        let entry = match t.layout {
            Layout::Same => Entry::same(p.name.clone(), &p.shape),
            Layout::Transposed => Entry::transposed(p.name.clone(), &p.shape),
        };
        let (entries, paths) = if is_buffer {
            (&mut resolved.buffers, &mut resolved.buffer_paths)
        } else {
            (&mut resolved.entries, &mut resolved.paths)
        };
        entries.push(entry);
        paths.push(t.path.clone());
    }
    if let Some(t) = (0..tensors.len())
        .find(|i| !owner.contains_key(i))
        .map(|i| &tensors[i])
    {
        if t.buffer {
            return Err(format!(
                "port {name}: Burn's BatchNorm {} holds running statistics ({}) the weights file lacks: save PyTorch's state_dict(), which holds its running_mean and running_var",
                t.path.rsplit_once('.').map_or(t.path.as_str(), |(m, _)| m),
                t.path
            ));
        }
        return Err(format!(
            "port {name}: Burn parameter {} {} has no PyTorch parameter of port.params mapped to it (mapped: {})",
            t.path,
            shown(&t.shape),
            port.params
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(resolved)
}

/// A parameter `p` with a declared `mapping`: its entry and the Burn path of each part, in
/// order; one line on a Burn path the module does not have, a buffer, a path another
/// parameter took, or a shape the mapping does not give.
fn mapped<'a>(
    name: &str,
    p: &'a crate::config::PortParam,
    mapping: &Mapping,
    tensors: &[BurnTensor],
    owner: &mut HashMap<usize, &'a str>,
) -> Result<(Entry, Vec<String>), String> {
    let (paths, layout): (Vec<&String>, Layout) = match mapping {
        Mapping::AsIs(path) => (vec![path], Layout::Same),
        Mapping::Transposed(path) => (vec![path], Layout::Transposed),
        Mapping::SplitRows { parts, transpose } => (
            parts.iter().collect(),
            if *transpose {
                Layout::Transposed
            } else {
                Layout::Same
            },
        ),
    };
    let k = paths.len();
    if k == 0 || p.shape.is_empty() || !p.shape[0].is_multiple_of(k) {
        return Err(format!(
            "port {name}: Port::mappings splits PyTorch parameter {} {} into {k} row blocks, which do not divide its {} rows",
            p.name,
            shown(&p.shape),
            p.shape.first().copied().unwrap_or(0)
        ));
    }
    if layout == Layout::Transposed && p.shape.len() != 2 {
        return Err(format!(
            "port {name}: Port::mappings transposes PyTorch parameter {} {}, which is not a matrix",
            p.name,
            shown(&p.shape)
        ));
    }
    let entry = Entry::packed_rows(p.name.clone(), &p.shape, k, layout);
    let want = other_layout(&entry.part_shape(), layout);
    for path in &paths {
        let Some(i) = tensors.iter().position(|t| &t.path == *path) else {
            let known: Vec<&str> = tensors.iter().map(|t| t.path.as_str()).collect();
            return Err(format!(
                "port {name}: Port::mappings maps PyTorch parameter {} to {path}, which is no tensor of the Burn module (it has {})",
                p.name,
                known.join(", ")
            ));
        };
        let t = &tensors[i];
        if t.buffer {
            return Err(format!(
                "port {name}: Port::mappings maps PyTorch parameter {} to Burn's running statistic {path}, a buffer",
                p.name
            ));
        }
        if t.shape != want {
            return Err(format!(
                "port {name}: Port::mappings maps PyTorch parameter {} {} to Burn parameter {path} {}: {} expected {}",
                p.name,
                shown(&p.shape),
                shown(&t.shape),
                if k > 1 { "each block" } else { "the mapping" },
                shown(&want)
            ));
        }
        if let Some(first) = owner.insert(i, &p.name) {
            return Err(format!(
                "port {name}: PyTorch parameters {first} and {} both map to Burn's {path}",
                p.name
            ));
        }
    }
    Ok((entry, paths.into_iter().cloned().collect()))
}

/// Whether some parameter of `port` maps to the Burn key `key` (such a tensor is not
/// "left unmatched" when another parameter is missing).
fn port_maps_to(port: &PortDecl, keys: &KeyRemapper, key: &str) -> bool {
    (port.params.iter().chain(&port.buffers)).any(|p| remap(&p.name, keys) == key)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The ids of `module`'s parameters at `paths` (Burn paths, [`Resolved::paths`]), in order.
pub(crate) fn ids_at<M: Module>(module: &M, paths: &[String]) -> Vec<ParamId> {
    let ids: HashMap<String, ParamId> = module
        .collect(None, None, false)
        .into_iter()
        .filter_map(|t| Some((t.name, ParamId::from(t.param_id?))))
        .collect();
    paths
        .iter()
        .map(|p| *ids.get(p).unwrap_or_else(|| panic!("Burn parameter {p}")))
        .collect()
}
