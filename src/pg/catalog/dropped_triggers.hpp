// The extension's triggers a command drops, kept by an object-access hook
// for the sql_drop event trigger (see dropped_triggers.cpp).
#pragma once

namespace pgt::pg {

// Installs the object-access hook (from _PG_init, in every backend that
// loads the library).
void install_dropped_triggers_hook();

}  // namespace pgt::pg
