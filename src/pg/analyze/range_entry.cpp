// Who reads a range-table entry, and unreferenced entries (see
// range_entry.hpp).
#include "pg/analyze/range_entry.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
}

namespace pgt::pg {
namespace {

using Walker = bool (*)();

struct EntryReads {
    int varno;
    bool whole_row_only;
    int levels;  // how far below the entry's query the walk is
    bool found;
};

bool entry_walker(Node* node, void* ctx) {
    auto* e = static_cast<EntryReads*>(ctx);
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Var)) {
        const auto* v = castNode(Var, node);
        e->found =
            e->found || (v->varno == e->varno && static_cast<int>(v->varlevelsup) == e->levels &&
                         (!e->whole_row_only || v->varattno == InvalidAttrNumber));
        return false;
    }
    if (IsA(node, Query)) {
        e->levels++;
        (void)query_tree_walker(
            castNode(Query, node),
            reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(entry_walker)), ctx, 0);
        e->levels--;
        return false;
    }
    return expression_tree_walker(
        node, reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(entry_walker)), ctx);
}

}  // namespace

bool reads_entry(Node* node, int varno, bool whole_row_only) {
    EntryReads e{varno, whole_row_only, 0, false};
    (void)entry_walker(node, &e);
    return e.found;
}

bool read_as_whole_row(Query* q, int varno) {
    EntryReads e{varno, true, 0, false};
    (void)query_tree_walker(q, reinterpret_cast<Walker>(reinterpret_cast<void (*)()>(entry_walker)),
                            &e, 0);
    return e.found;
}

void make_placeholder(Query* q, int rtindex) {
    RangeTblEntry* rte = rt_fetch(static_cast<Index>(rtindex), q->rtable);
    rte->rtekind = RTE_RESULT;
    rte->joinaliasvars = NIL;
    rte->joinleftcols = NIL;
    rte->joinrightcols = NIL;
    rte->eref = makeAlias(rte->eref->aliasname, NIL);
}

}  // namespace pgt::pg
