//! The egui application.

pub fn run(_args: crate::cli::GuiArgs) -> anyhow::Result<()> {
    anyhow::bail!("the GUI is not built yet")
}
