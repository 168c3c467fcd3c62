package server

import (
	"strings"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/sqlparser"
)

// serialType is what a column declared SERIAL becomes, as MySQL defines
// the alias; vitess' grammar has no SERIAL, so CREATE TABLE statements are
// rewritten before parsing (see rewriteSerial).
const serialType = "BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE"

// rewriteSerial replaces a SERIAL column type in a CREATE TABLE statement
// by serialType, token by token with vitess' tokenizer: an identifier
// "serial" that follows a column name, itself after "(" or ",". Other
// statements are returned unchanged.
func rewriteSerial(p *sqlparser.Parser, sql string) string {
	if len(sql) < 6 || !strings.EqualFold(strings.TrimSpace(sql)[:6], "create") || !strings.Contains(strings.ToLower(sql), "serial") {
		return sql
	}
	tok := p.NewStringTokenizer(sql)
	var out strings.Builder
	last := 0
	var prev, prev2 int // token types of the two tokens before
	for {
		start := tok.Pos
		for start < len(sql) && strings.IndexByte(" \t\r\n", sql[start]) >= 0 {
			start++
		}
		typ, val := tok.Scan()
		if typ == 0 || typ == sqlparser.LEX_ERROR {
			break
		}
		if typ == sqlparser.ID && strings.EqualFold(val, "serial") && prev == sqlparser.ID && (prev2 == '(' || prev2 == ',') {
			out.WriteString(sql[last:start])
			out.WriteString(serialType)
			last = tok.Pos
		}
		prev2, prev = prev, typ
	}
	out.WriteString(sql[last:])
	return out.String()
}

var intTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "integer": true, "bigint": true}
var strTypes = map[string]bool{"char": true, "varchar": true, "text": true, "tinytext": true, "mediumtext": true, "longtext": true, "binary": true, "varbinary": true, "blob": true, "tinyblob": true, "mediumblob": true, "longblob": true}

// tableSpec turns a CREATE TABLE into a schema.
func (s *session) tableSpec(ct *sqlparser.CreateTable) (*engine.Table, error) {
	if !ct.FullyParsed || ct.TableSpec == nil {
		return nil, unsupported("this CREATE TABLE (it did not parse fully)")
	}
	if ct.Temp || ct.OptLike != nil || ct.Select != nil {
		return nil, unsupported("CREATE TEMPORARY TABLE, CREATE TABLE … LIKE or … SELECT")
	}
	spec := ct.TableSpec
	if len(spec.Constraints) > 0 || spec.PartitionOption != nil {
		return nil, unsupported("constraints or partitions")
	}
	db, name, err := s.tableName(ct.Table)
	if err != nil {
		return nil, err
	}
	t := &engine.Table{DB: db, Name: name, Key: -1}
	var primary []int
	var uniques [][]int
	for i, cd := range spec.Columns {
		typ := strings.ToLower(cd.Type.Type)
		c := engine.Column{Name: cd.Name.String(), Unsigned: cd.Type.Unsigned, Type: sqlparser.String(cd.Type)}
		switch {
		case intTypes[typ]:
			c.Int = true
		case strTypes[typ]:
			if cd.Type.Length != nil && (typ == "char" || typ == "varchar" || typ == "binary" || typ == "varbinary") {
				c.MaxLen = *cd.Type.Length
			}
		default:
			return nil, unsupported("column type " + cd.Type.Type)
		}
		if o := cd.Type.Options; o != nil {
			c.NotNull = o.Null != nil && !*o.Null
			c.AutoInc = o.Autoincrement
			if o.Default != nil {
				sc := &scope{s: s}
				v, err := sc.eval(o.Default)
				if err != nil {
					return nil, err
				}
				if v.K != engine.Null {
					if c.Int {
						n, _ := v.AsInt()
						v = engine.IntValue(n)
					} else {
						v = engine.StrValue(v.String())
					}
				}
				c.Default = v
			}
			switch o.KeyOpt {
			case sqlparser.ColKeyPrimary:
				primary = []int{i}
			case sqlparser.ColKeyUnique, sqlparser.ColKeyUniqueKey:
				uniques = append(uniques, []int{i})
			case sqlparser.ColKey:
				t.Indexes = append(t.Indexes, engine.Index{Name: c.Name, Cols: []int{i}})
			case sqlparser.ColKeyNone:
			default:
				return nil, unsupported("column key option")
			}
		}
		t.Columns = append(t.Columns, c)
	}
	for _, ix := range spec.Indexes {
		var cols []int
		for _, ic := range ix.Columns {
			if ic.Expression != nil {
				return nil, unsupported("functional index")
			}
			j, ok := t.Column(ic.Column.String())
			if !ok {
				return nil, engine.ErrBadField(ic.Column.String(), "index")
			}
			cols = append(cols, j)
		}
		switch ix.Info.Type {
		case sqlparser.IndexTypePrimary:
			primary = cols
		case sqlparser.IndexTypeUnique:
			uniques = append(uniques, cols)
		case sqlparser.IndexTypeDefault:
			name := ix.Info.Name.String()
			if name == "" {
				name = t.Columns[cols[0]].Name
			}
			t.Indexes = append(t.Indexes, engine.Index{Name: name, Cols: cols})
		default:
			return nil, unsupported("FULLTEXT or SPATIAL index")
		}
	}
	// The clustered key: the PRIMARY KEY, else the first UNIQUE NOT NULL
	// column, as InnoDB chooses; one integer column.
	switch {
	case primary != nil:
		if len(primary) != 1 || !t.Columns[primary[0]].Int {
			return nil, unsupported("a PRIMARY KEY other than one integer column")
		}
		t.Key = primary[0]
	default:
		for i, u := range uniques {
			if len(u) == 1 && t.Columns[u[0]].Int && t.Columns[u[0]].NotNull {
				t.Key = u[0]
				uniques = append(uniques[:i], uniques[i+1:]...)
				break
			}
		}
	}
	for _, u := range uniques {
		if !(len(u) == 1 && u[0] == t.Key) {
			return nil, unsupported("a UNIQUE index besides the clustered key")
		}
	}
	if t.Key >= 0 {
		t.Columns[t.Key].NotNull = true
	}
	for i, c := range t.Columns {
		if c.AutoInc && i != t.Key {
			return nil, unsupported("AUTO_INCREMENT on a column that is not the clustered key")
		}
	}
	return t, nil
}

func (s *session) execDDL(stmt sqlparser.Statement) (*sqltypes.Result, error) {
	// DDL commits the open transaction first, as MySQL does.
	if err := s.commit(); err != nil {
		return nil, err
	}
	eng := s.srv.eng
	var err error
	switch st := stmt.(type) {
	case *sqlparser.CreateDatabase:
		err = eng.CreateDatabase(st.DBName.String(), st.IfNotExists)
	case *sqlparser.DropDatabase:
		err = eng.DropDatabase(st.DBName.String(), st.IfExists)
		if err == nil && st.DBName.String() == s.db {
			s.setDB("")
		}
	case *sqlparser.CreateTable:
		var t *engine.Table
		if t, err = s.tableSpec(st); err == nil {
			err = eng.CreateTable(t, st.IfNotExists)
		}
	case *sqlparser.DropTable:
		if st.Temp {
			return nil, unsupported("DROP TEMPORARY TABLE")
		}
		for _, tn := range st.FromTables {
			db, name, terr := s.tableName(tn)
			if terr == nil {
				terr = eng.DropTable(db, name, st.IfExists)
			}
			if terr != nil {
				return nil, terr
			}
		}
	case *sqlparser.AlterTable:
		err = s.alterTable(st)
	}
	if err != nil {
		return nil, err
	}
	return &sqltypes.Result{}, nil
}

// alterTable runs the ALTER TABLE forms CREATE INDEX and DROP INDEX parse
// into: ADD INDEX and DROP INDEX, one at a time.
func (s *session) alterTable(st *sqlparser.AlterTable) error {
	if !st.FullyParsed || len(st.AlterOptions) != 1 || st.PartitionSpec != nil {
		return unsupported("this ALTER TABLE (only ADD INDEX and DROP INDEX)")
	}
	db, name, err := s.tableName(st.Table)
	if err != nil {
		return err
	}
	switch o := st.AlterOptions[0].(type) {
	case *sqlparser.AddIndexDefinition:
		def := o.IndexDefinition
		if def.Info.Type != sqlparser.IndexTypeDefault {
			return unsupported("adding a PRIMARY, UNIQUE, FULLTEXT or SPATIAL index")
		}
		var cols []string
		for _, ic := range def.Columns {
			if ic.Expression != nil {
				return unsupported("functional index")
			}
			cols = append(cols, ic.Column.String())
		}
		return s.srv.eng.CreateIndex(db, name, def.Info.Name.String(), cols)
	case *sqlparser.DropKey:
		if o.Type != sqlparser.NormalKeyType {
			return unsupported("dropping a PRIMARY KEY or FOREIGN KEY")
		}
		return s.srv.eng.DropIndex(db, name, o.Name.String())
	}
	return unsupported("ALTER TABLE " + sqlparser.String(st.AlterOptions[0]))
}
