"""The tests CI leaves to the full run (``bash scripts/test.sh -m ""``), to keep CI near its 30 minutes
on a 2-core machine.

Each one repeats a path that a test CI runs already covers (named beside it), or checks a script's
secondary output; together they took ~1,080 of CI's ~5,960 worker-seconds on a slow day
(2026-12-07). They are marked ``slow`` as they are collected (tests/conftest.py), so ``-m ""`` runs
them and ``-m slow`` runs them alone. A README command's test is never here (tests/test_readme.py),
and every key names a test that exists (tests/test_ci_budget.py).

Keys are pytest node ids: a test function (every parametrization) or one parametrization.
"""

from __future__ import annotations

LEFT_TO_THE_FULL_RUN: dict[str, str] = {
    # ---- supervised learning: the README's expert start runs train_supervised, accuracy and 8x8 self-play
    "tests/test_supervised.py::test_the_shipped_wthor_cpu_reproduction_runs_and_resumes_as_users_run_it":
        "test_a_stopped_run_resumes_exactly_where_it_stopped (resume) and tests/test_wthor.py's small-database "
        "run of the reproduction script",
    "tests/test_supervised.py::test_run_saves_a_checkpoint_that_agents_and_the_accuracy_command_read":
        "test_the_readmes_expert_start_trains_scores_and_starts_8x8_self_play (accuracy and self-play read its run)",
    "tests/test_supervised.py::test_a_fresh_run_starts_from_a_trained_network_and_a_resumed_one_ignores_it":
        "tests/test_init_network.py (a fresh start holds the network; a run resumes from its own checkpoint)",
    "tests/test_supervised.py::test_the_gpu_script_trains_the_conv8_reproduction_and_exports_it_shortened_on_a_cpu":
        "the expert start (the same train_supervised on another config) and the export tests",
    "tests/test_supervised.py::test_the_two_recipes_differ_only_in_their_optimizer_and_penalty":
        "the expert start's run of one recipe",
    # ---- training runs: the resume test (evaluation every iteration, a gate, a stage change) and the
    # SIGINT-during-evaluation test run the in-run evaluation in CI
    "tests/test_train.py::test_periodic_evaluation_scores_baselines_keeps_the_best_and_reuses_compiled_matches":
        "tests/test_resume.py (in-run evaluation and gating, resumed bit for bit) and tests/test_preemption.py",
    "tests/test_train.py::test_learning_rate_stage_changes_the_size_of_parameter_updates":
        "tests/test_time_schedules.py (the schedule's values) and tests/test_resume.py (a stage change)",
    "tests/test_time_schedules.py::test_iterations_clock_also_keeps_the_final_evaluation_inside_the_budget":
        "the quickstart test (the minutes clock ends a run inside its budget)",
    "tests/test_aux_targets.py::test_a_tiny_run_with_every_option_logs_the_new_terms_and_checkpoints":
        "test_final_board_targets_equal_a_plain_python_replay and test_with_every_option_off_training_adds_nothing",
    "tests/test_lanes.py::test_more_lanes_than_devices_through_the_iteration":
        "test_folded_lanes_play_each_lane_as_alone (the folded lanes themselves)",
    "tests/test_checkpoint.py::test_a_run_written_before_a_package_layout_change_resumes[run_before_rooms-2]":
        "its run_before_layout case (the same renaming of old checkpoints)",
    "tests/test_tensorboard.py::test_supervised_events_hold_every_logged_number_and_the_curves[True]":
        "its False case (the same events)",
    # ---- the endgame and the solver: the solver is checked against brute force in CI
    "tests/test_endings.py::test_a_margin_networks_search_values_finished_games_on_its_scale":
        "tests/test_analyze.py's and tests/test_label_training.py's margin-network tests",
    "tests/test_endgame_anatomy.py::test_results_and_keeping_moves_match_the_jax_solver":
        "tests/test_solver.py::test_jax_solver_matches_brute_force",
    "tests/test_target_errors.py::test_exact_results_agree_with_the_jax_solver":
        "tests/test_solver.py::test_jax_solver_matches_brute_force",
    "tests/test_endgame_accuracy.py::test_perfect_endgame_agent_scores_full_marks":
        "test_command_reports_json and tests/test_entry_points.py::test_endgame_accuracy_of_a_network",
    "tests/test_traps.py::test_the_rule_checks_six_plies_deep_only_with_few_discs":
        "test_trapped_deep_matches_a_plain_python_six_ply_lookahead",
    # ---- WThor: the small-database run of the reproduction script and the rows' legality
    "tests/test_wthor.py::test_the_reproduction_script_scores_networks_on_both_held_out_sets_beside_the_papers":
        "test_the_reproduction_script_counts_a_small_database_and_names_the_papers_figures",
    "tests/test_wthor.py::test_every_shipped_game_replays_without_a_rules_error":
        "test_expert_rows_are_legal_unique_and_split_by_year",
    # ---- scripts and engines
    "tests/test_bench_solve_depth.py::test_main_times_solves_and_searches_per_empties":
        "tests/test_entry_points.py::test_benchmarks[bench_solver] (a benchmark's launch)",
    "tests/test_analyze.py::test_analyze_command_prints_board_values_and_moves":
        "the quickstart test's `analyze` and test_analysis_matches_the_network_and_counts_every_simulation",
    "tests/test_gtp_agent.py::test_full_games_against_the_fake_engine[4]": "its 8x8 case",
    "tests/test_signals.py::test_a_signal_to_eval_while_it_compiles_is_one_line_and_the_shells_status[2]":
        "its SIGTERM case (the same handler) and tests/test_preemption.py's SIGINTs",
}


def left_to_the_full_run(nodeid: str) -> bool:
    """Whether CI leaves the test ``nodeid`` out: its id, or its function's, is a key above."""
    return nodeid in LEFT_TO_THE_FULL_RUN or nodeid.split("[", 1)[0] in LEFT_TO_THE_FULL_RUN
