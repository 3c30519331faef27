//! What the trainer records of its tensors, step by step (the Python side's `RunRecorder`,
//! src/torch_burn_parity/io/run_tensors.py): into the run's tensors file when it has a run
//! file (the binary), else into the run block's inline lists (a test's run without files).
//!
//! The file's keys, PyTorch's names and layouts, in the model's order:
//! `params/{name}`, `buffers/{name}` (after the last step), `trajectory/{params,grads,
//! buffers}/{name}` ([S, *shape], row k after step k + 1), then each probe step's
//! `layers/{step}/{outputs,input_grads}/{k}` (flat), as they come.

use std::path::Path;

use crate::models::Entry;
use crate::runfile::{Floats, LayerRecord, Named, RunTensors, TensorsFile, Trajectory};
use crate::tensors::{Dtype, TensorWriter, tensors_path};

/// A trajectory: of the parameters, their gradients, or the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Params = 0,
    Grads = 1,
    Buffers = 2,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Params => "params",
            Kind::Grads => "grads",
            Kind::Buffers => "buffers",
        }
    }
}

enum Sink {
    /// Per kind, per tensor, one list per step.
    Inline([Vec<Vec<Floats>>; 3]),
    File {
        writer: TensorWriter,
        /// The file's name, beside the run file.
        name: String,
        dtype: Dtype,
        /// The run file: an older one is removed before the new tensors file takes its
        /// place, so a crash between the two renames never pairs new tensors with an old run.
        run_file: std::path::PathBuf,
    },
}

/// One run's recorder. Dropped before [`Recorder::finish`] (a failed run), it leaves no
/// tensors file.
pub struct Recorder {
    params: Vec<String>,
    buffers: Vec<String>,
    steps: usize,
    layers: Vec<LayerRecord>,
    sink: Sink,
}

impl Recorder {
    /// A recorder of `steps` steps of a model's `params` and `buffers` (PyTorch's names and
    /// shapes), with a layer record of `layer_count` layers at each of `probe_steps` up to
    /// `steps`; into the tensors file beside `out` in precision `dtype` when given.
    pub fn new(
        out: Option<&Path>,
        dtype: Dtype,
        params: &[Entry],
        buffers: &[Entry],
        steps: usize,
        probe_steps: &[usize],
        layer_count: usize,
    ) -> Result<Recorder, String> {
        let names = |entries: &[Entry]| entries.iter().map(|e| e.name.clone()).collect();
        let sink = match out {
            None => Sink::Inline(
                [params.len(), params.len(), buffers.len()]
                    .map(|n| (0..n).map(|_| Vec::with_capacity(steps)).collect()),
            ),
            Some(out) => {
                let path = tensors_path(out);
                if path == out {
                    return Err(format!(
                        "{}: a run file cannot be its own tensors file",
                        out.display()
                    ));
                }
                let shape = |e: &Entry| e.shape.clone();
                let row = |e: &Entry| [vec![steps], e.shape.clone()].concat();
                let mut declared: Vec<(String, Vec<usize>)> = Vec::new();
                declared.extend(
                    params
                        .iter()
                        .map(|e| (format!("params/{}", e.name), shape(e))),
                );
                declared.extend(
                    buffers
                        .iter()
                        .map(|e| (format!("buffers/{}", e.name), shape(e))),
                );
                for (kind, entries) in [("params", params), ("grads", params), ("buffers", buffers)]
                {
                    declared.extend(
                        entries
                            .iter()
                            .map(|e| (format!("trajectory/{kind}/{}", e.name), row(e))),
                    );
                }
                let mut probes: Vec<usize> = probe_steps
                    .iter()
                    .copied()
                    .filter(|&s| (1..=steps).contains(&s))
                    .collect();
                probes.sort_unstable();
                probes.dedup();
                let late: Vec<String> = probes
                    .iter()
                    .flat_map(|step| {
                        ["outputs", "input_grads"]
                            .into_iter()
                            .flat_map(move |field| {
                                (0..layer_count).map(move |k| format!("layers/{step}/{field}/{k}"))
                            })
                    })
                    .collect();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Sink::File {
                    writer: TensorWriter::create(&path, &declared, dtype, &late)?,
                    name,
                    dtype,
                    run_file: out.to_path_buf(),
                }
            }
        };
        Ok(Recorder {
            params: names(params),
            buffers: names(buffers),
            steps,
            layers: Vec::new(),
            sink,
        })
    }

    /// Trajectory `kind` of the `k`th parameter or buffer after 0-based `step`.
    pub fn row(
        &mut self,
        kind: Kind,
        k: usize,
        step: usize,
        values: Vec<f64>,
    ) -> Result<(), String> {
        let names = match kind {
            Kind::Params | Kind::Grads => &self.params,
            Kind::Buffers => &self.buffers,
        };
        match &mut self.sink {
            Sink::Inline(lists) => {
                lists[kind as usize][k].push(Floats(values));
                Ok(())
            }
            Sink::File { writer, .. } => {
                let key = format!("trajectory/{}/{}", kind.key(), names[k]);
                writer.write_row(&key, step, &values)
            }
        }
    }

    /// One probe step's layer record.
    pub fn layer(&mut self, mut record: LayerRecord) -> Result<(), String> {
        if let Sink::File { writer, .. } = &mut self.sink {
            let values = record.values.take().expect("a record with its values");
            for (field, lists) in [
                ("outputs", values.outputs),
                ("input_grads", values.input_grads),
            ] {
                for (k, list) in lists.into_iter().enumerate() {
                    writer.add(&format!("layers/{}/{field}/{k}", record.step), &list.0)?;
                }
            }
        }
        self.layers.push(record);
        Ok(())
    }

    /// The run block's tensors and layer records, given the parameters and buffers after
    /// the last step (in the model's order); the tensors file is then in place.
    pub fn finish(
        self,
        params: Vec<Vec<f64>>,
        buffers: Vec<Vec<f64>>,
    ) -> Result<(RunTensors, Vec<LayerRecord>), String> {
        fn named<T>(names: &[String], values: impl IntoIterator<Item = T>) -> Named<T> {
            names.iter().map(String::as_str).zip(values).collect()
        }
        let tensors = match self.sink {
            Sink::Inline([traj_params, traj_grads, traj_buffers]) => RunTensors::Inline {
                params: named(&self.params, params.into_iter().map(Floats)),
                buffers: named(&self.buffers, buffers.into_iter().map(Floats)),
                trajectory: Trajectory {
                    params: named(&self.params, traj_params),
                    grads: named(&self.params, traj_grads),
                    buffers: named(&self.buffers, traj_buffers),
                },
            },
            Sink::File {
                mut writer,
                name,
                dtype,
                run_file,
            } => {
                for (kind, names, values) in [
                    ("params", &self.params, params),
                    ("buffers", &self.buffers, buffers),
                ] {
                    for (name, values) in names.iter().zip(values) {
                        writer.write(&format!("{kind}/{name}"), &values)?;
                    }
                }
                match std::fs::remove_file(&run_file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(format!("{}: {e}", run_file.display()));
                    }
                    _ => {}
                }
                RunTensors::File {
                    tensors: TensorsFile {
                        file: name,
                        dtype: dtype.name(),
                        steps: (1..=self.steps).collect(),
                        bytes: writer.close()?,
                    },
                }
            }
        };
        Ok((tensors, self.layers))
    }
}
