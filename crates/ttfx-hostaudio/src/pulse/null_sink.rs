//! A null sink: an output device that plays nowhere, whose monitor source records what
//! is played into it. The microphone plays its speech into one (its monitor is what the
//! browser hears); the e2e audio truth makes one the default output and records it.

use super::{PulseError, PulseServer, load_module, pactl};

/// The sink's sample format, when it should not be the server's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleFormat {
    pub rate: u32,
    pub channels: u8,
}

/// A null sink added to a server. On drop it is unloaded and the defaults it took are
/// given back, on a server this process joined; a server this process started goes with
/// everything in it, so nothing is undone there.
#[must_use = "the sink is removed, and the defaults it took come back, when dropped"]
pub struct NullSink {
    name: String,
    module: String,
    /// Whether to undo on drop (the server was running before this process).
    undo: bool,
    /// The default sink before this one became it.
    previous_sink: Option<String>,
    /// The default source before this one's monitor became it.
    previous_source: Option<String>,
}

impl NullSink {
    /// Adds a null sink named `name` to `server`, with `description` as the name other
    /// programs show.
    pub fn load(
        server: &PulseServer,
        name: &str,
        description: &str,
        format: Option<SampleFormat>,
    ) -> Result<NullSink, PulseError> {
        let format = format
            .map(|f| format!(" rate={} channels={}", f.rate, f.channels))
            .unwrap_or_default();
        let module = load_module(&format!(
            "module-null-sink sink_name={name}{format} \
             sink_properties=device.description={description}"
        ))?;
        Ok(NullSink {
            name: name.to_owned(),
            module,
            undo: !server.is_own(),
            previous_sink: None,
            previous_source: None,
        })
    }

    /// The sink's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The monitor source that records what the sink plays.
    pub fn monitor(&self) -> String {
        format!("{}.monitor", self.name)
    }

    /// Makes this sink the server's default output (where browsers play).
    pub fn make_default_sink(&mut self) -> Result<(), PulseError> {
        let previous = pactl(&["get-default-sink"]).ok();
        pactl(&["set-default-sink", &self.name])?;
        self.previous_sink = previous;
        Ok(())
    }

    /// Makes this sink's monitor the server's default input (what `getUserMedia` hears).
    pub fn make_monitor_default_source(&mut self) -> Result<(), PulseError> {
        let previous = pactl(&["get-default-source"]).ok();
        pactl(&["set-default-source", &self.monitor()])?;
        self.previous_source = previous;
        Ok(())
    }
}

impl Drop for NullSink {
    fn drop(&mut self) {
        if !self.undo {
            return;
        }
        if let Some(source) = self.previous_source.as_deref() {
            let _ = pactl(&["set-default-source", source]);
        }
        if let Some(sink) = self.previous_sink.as_deref() {
            let _ = pactl(&["set-default-sink", sink]);
        }
        let _ = pactl(&["unload-module", &self.module]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a server that was running (joined), the sink becomes the default and, when
    /// dropped, is unloaded with the previous default back. Skipped without PulseAudio.
    #[test]
    fn a_sink_on_a_joined_server_gives_back_the_default_it_took() {
        let Ok(_running) = PulseServer::start_or_join() else {
            eprintln!("skipped: no PulseAudio (`cargo xtask setup` installs it)");
            return;
        };
        let joined = PulseServer::start_or_join().unwrap();
        assert!(!joined.is_own());
        let before = pactl(&["get-default-sink"]).ok();
        let name = format!("ttfx_test_{}", std::process::id());
        let format = SampleFormat {
            rate: 22_050,
            channels: 1,
        };
        let mut sink = NullSink::load(&joined, &name, "ttfx-test", Some(format)).unwrap();
        sink.make_default_sink().unwrap();
        assert_eq!(pactl(&["get-default-sink"]).unwrap(), name);
        let module = sink.module.clone();
        let short = pactl(&["list", "short", "sinks"]).unwrap();
        assert!(
            short.contains(&format!("{name}\tmodule-null-sink.c\ts16le 1ch 22050Hz")),
            "{short}"
        );
        drop(sink);
        assert_eq!(pactl(&["get-default-sink"]).ok(), before);
        let modules = pactl(&["list", "short", "modules"]).unwrap();
        assert!(
            !modules
                .lines()
                .any(|l| l.split('\t').next() == Some(&module)),
            "{modules}"
        );
    }
}
