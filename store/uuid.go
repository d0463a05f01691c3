package store

import (
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUIDStrings lets ids kept as Go strings travel as binary uuids.
// pgx has no binary plan from string to uuid: every such parameter first
// failed binary encoding (formatting an error that quotes the whole value,
// a 100-id array included) and was then sent as text, which cost the batch
// claim and finish about a fifth of their client CPU.
func registerUUIDStrings(m *pgtype.Map) {
	uuidType := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	m.RegisterType(uuidType)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: uuidType}})
}

type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(string); ok && format == pgtype.BinaryFormatCode {
		return stringUUIDPlan{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

// stringUUIDPlan encodes a textual uuid in binary; a string that is no
// uuid fails here, and pgx sends it as text for the server to refuse as
// before.
type stringUUIDPlan struct{}

func (stringUUIDPlan) Encode(value any, buf []byte) ([]byte, error) {
	var u pgtype.UUID
	if err := u.Scan(value.(string)); err != nil {
		return nil, err
	}
	return append(buf, u.Bytes[:]...), nil
}
