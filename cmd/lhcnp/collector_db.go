package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/dbschema"
	"github.com/lhcnp/lhcnp/migrations"
)

// collectorDB gives the collector the schema's migrations, partition
// maintenance (with db.retention when it is set, else the database's own) and the YANG type and unit
// of new series from the modules.
func collectorDB() (collector.DB, error) {
	cat, err := dbschema.New()
	if err != nil {
		return collector.DB{}, err
	}
	return collector.DB{
		Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			return migrations.Up(ctx, conn.Conn())
		},
		Maintain: func(ctx context.Context, pool *pgxpool.Pool, retention *time.Duration) error {
			if retention != nil {
				if err := migrations.SetRetention(ctx, pool, *retention); err != nil {
					return fmt.Errorf("db.retention: %w", err)
				}
			}
			return migrations.Maintain(ctx, pool)
		},
		Describe: func(schemaPath string) (string, string) {
			l, _ := cat.Lookup(schemaPath)
			return l.YangType, l.Unit
		},
	}, nil
}
