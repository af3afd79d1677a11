//! The sheet of every keyboard and mouse gesture (`?`, or Help > Keyboard and mouse): each
//! gesture also has a menu entry, and this lists them in one place.

use eframe::egui;

const SHEET: &[(&str, &[(&str, &str)])] = &[
    (
        "Time",
        &[
            ("PageDown / PageUp", "next / previous page"),
            ("Right / Left", "a tenth of a page later / earlier"),
            ("Home / End", "start / end of the recording"),
            ("+ / −, ctrl+wheel, pinch", "zoom the time axis"),
            ("wheel over the traces", "move through the channels"),
        ],
    ),
    (
        "Channels",
        &[
            (
                "Shift+PageDown / PageUp",
                "next / previous page of channels",
            ),
            ("Up / Down", "amplitude of every channel"),
            (
                "click a label, then shift+Up / Down",
                "amplitude of that channel",
            ),
            ("F", "fit each channel to its lane"),
            ("B", "mark the selected channel bad (again: good)"),
            (
                "right-click a label",
                "hide, mark bad, the channel's own filters",
            ),
        ],
    ),
    (
        "Montages",
        &[
            ("F1 … F12", "the montages, in the Montage menu's order"),
            (
                "Montage > Load montage file…",
                "a montage in JSON or EDFbrowser's .mtg",
            ),
            ("Reference menu", "average, linked mastoids or any channels"),
        ],
    ),
    (
        "Measure and select",
        &[
            ("hover", "time and value under the cursor"),
            (
                "ctrl+click two points",
                "time, frequency and amplitude between them",
            ),
            ("shift+drag", "select a stretch (statistics, analyses)"),
            ("Esc", "clear the selection and the measurement"),
        ],
    ),
    (
        "Events",
        &[
            (
                "double-click the traces",
                "add an event with the first label",
            ),
            ("1 … 9", "add an event with that label"),
            ("alt+drag", "move the selected event"),
            ("Delete", "remove the selected event"),
            ("ctrl+Z / ctrl+shift+Z", "undo / redo"),
        ],
    ),
    ("Help", &[("?", "this sheet")]),
];

fn id() -> egui::Id {
    egui::Id::unique("shortcut sheet")
}

/// Opens or closes the sheet.
pub fn toggle(ctx: &egui::Context) {
    ctx.data_mut(|d| {
        let open = d.get_temp_mut_or(id(), false);
        *open = !*open;
    });
}

/// Opens or closes the sheet on `?` (not while typing), and draws it when open.
pub fn show(ctx: &egui::Context) {
    if !ctx.egui_wants_keyboard_input() && ctx.input(|i| i.key_pressed(egui::Key::Questionmark)) {
        toggle(ctx);
    }
    let mut open = ctx.data(|d| d.get_temp(id()).unwrap_or(false));
    egui::Window::new("Keyboard and mouse")
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .show(ctx, |ui| {
            egui::Grid::new("shortcuts").striped(true).show(ui, |ui| {
                for (section, rows) in SHEET {
                    ui.strong(*section);
                    ui.end_row();
                    for (keys, what) in *rows {
                        ui.monospace(*keys);
                        ui.label(*what);
                        ui.end_row();
                    }
                }
            });
        });
    ctx.data_mut(|d| d.insert_temp(id(), open));
}
