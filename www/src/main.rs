//! Mounts the lab page; everything else lives in the library.

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(ttfx_lab::App);
}
