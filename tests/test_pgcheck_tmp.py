import subprocess
import sys
import textwrap


def test_hive_on_pg(postgres, tmp_path):
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(f'''
        import sys
        from kraftlake.fleet.catalog import catalog_conf
        from kraftlake.settings.fleet import CatalogSettings
        from kraftlake.jobs.materialize import local_spark
        from pathlib import Path
        conf = catalog_conf(CatalogSettings(jdbc_url="{postgres.jdbc_url}", user="{postgres.user}", password_file=Path("{postgres.password_file}")), Path("/tmp"))
        spark = local_spark("t", extra=conf)
        spark.sql("CREATE SCHEMA IF NOT EXISTS c1")
        spark.range(3).write.format("delta").save("{tmp_path}/d")
        spark.sql("CREATE TABLE IF NOT EXISTS c1.t USING delta LOCATION '{tmp_path}/d'")
        print(spark.sql("SELECT count(*) FROM c1.t").collect())
        print(spark.sql("SHOW TABLES IN c1").collect())
    '''))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd="/work/wt-fleet")
    print(r.stdout, r.stderr[-5000:])
    assert r.returncode == 0
    r = subprocess.run([sys.executable, "-c", f'''
from kraftlake.fleet.catalog import catalog_conf
from kraftlake.settings.fleet import CatalogSettings
from kraftlake.jobs.materialize import local_spark
from pathlib import Path
spark = local_spark("t2", extra=catalog_conf(CatalogSettings(jdbc_url="{postgres.jdbc_url}", user="{postgres.user}", password_file=Path("{postgres.password_file}")), Path("/tmp")))
print("SECOND", spark.sql("SELECT count(*) FROM c1.t").collect())
'''], capture_output=True, text=True, cwd="/work/wt-fleet")
    print(r.stdout, r.stderr[-3000:])
    assert "SECOND" in r.stdout
