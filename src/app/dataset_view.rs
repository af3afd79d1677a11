//! A BIDS dataset beside the browser: its runs (subject, session, task, run) with the
//! participants' columns, filtered by a text; clicking a run opens it with its sidecars.

use eframe::egui;

use crate::recording::bids::{Dataset, Run};

pub struct DatasetPanel {
    pub dataset: Dataset,
    /// The run shown in the browser, an index in `dataset.runs`.
    pub current: Option<usize>,
    filter: String,
    pub open: bool,
    /// The table's header: the entities, then the participants' columns (all but the id).
    header: Vec<String>,
    /// Each run's participant values under those columns (looked up once, not every frame).
    extra: Vec<Vec<String>>,
    subjects: usize,
}

impl DatasetPanel {
    pub fn new(dataset: Dataset) -> Self {
        let t = &dataset.participants;
        let columns: Vec<usize> = (0..t.columns.len())
            .filter(|&c| t.columns[c] != "participant_id")
            .collect();
        let header = ["subject", "session", "task", "run"]
            .into_iter()
            .map(str::to_string)
            .chain(columns.iter().map(|&c| t.columns[c].clone()))
            .collect();
        let extra = (dataset.runs.iter())
            .map(|run| match dataset.participant(&run.subject) {
                Some(row) => (columns.iter())
                    .map(|&c| row.get(c).cloned().unwrap_or_default())
                    .collect(),
                None => vec![String::new(); columns.len()],
            })
            .collect();
        let subjects = (dataset.runs.iter())
            .map(|r| r.subject.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        DatasetPanel {
            dataset,
            current: None,
            filter: String::new(),
            open: true,
            header,
            extra,
            subjects,
        }
    }

    fn matches(&self, run: &Run, extra: &[String]) -> bool {
        let f = self.filter.trim().to_lowercase();
        f.is_empty()
            || f.split_whitespace().all(|w| {
                run.title().to_lowercase().contains(w)
                    || extra.iter().any(|v| v.to_lowercase().contains(w))
            })
    }

    /// Draws the panel; returns the run the user picked.
    pub fn ui(&mut self, ui: &mut egui::Ui) -> Option<usize> {
        let mut picked = None;
        ui.heading(&self.dataset.name);
        ui.label(format!(
            "BIDS · {} subjects · {} runs",
            self.subjects,
            self.dataset.runs.len()
        ))
        .on_hover_text(self.dataset.root.display().to_string());
        ui.add(
            egui::TextEdit::singleline(&mut self.filter)
                .hint_text("filter, e.g. sub-02 rest patient"),
        );
        ui.separator();
        egui::ScrollArea::both().show(ui, |ui| {
            egui::Grid::new("bids runs")
                .striped(true)
                .num_columns(self.header.len())
                .show(ui, |ui| {
                    for h in &self.header {
                        ui.strong(h);
                    }
                    ui.end_row();
                    for (k, (run, extra)) in self.dataset.runs.iter().zip(&self.extra).enumerate() {
                        if !self.matches(run, extra) {
                            continue;
                        }
                        let chosen = self.current == Some(k);
                        let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "–".into());
                        let first = ui
                            .selectable_label(chosen, format!("sub-{}", run.subject))
                            .on_hover_text(run.path.display().to_string());
                        let mut clicked = first.clicked();
                        for text in [dash(&run.session), dash(&run.task), dash(&run.run)]
                            .into_iter()
                            .chain(extra.iter().cloned())
                        {
                            clicked |= ui.selectable_label(chosen, text).clicked();
                        }
                        if clicked {
                            picked = Some(k);
                        }
                        ui.end_row();
                    }
                });
        });
        picked
    }
}
