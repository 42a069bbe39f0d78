/* pa_ssl_field.h - the RoboCup SSL field of each division (the rules'
 * table), shared by pa-sim (walls, goals, the ball) and pa-netgw (the
 * vision geometry packets). Library pa_ssl_field. */
#ifndef PA_SSL_FIELD_H
#define PA_SSL_FIELD_H

/* Field geometry (the rules' table per division), field frame: centre at
 * (0, 0), x along the length. */
typedef struct pa_ssl_field {
  char division;        /* 'A' or 'B' */
  double length, width; /* [m] between the field lines */
  double boundary;      /* [m] run-off from the lines to the walls */
  double goal_width;    /* [m] inner, between the posts */
  double goal_depth;    /* [m] inner */
  double goal_height;   /* [m] walls the ball passes over when higher */
  double goal_wall;     /* [m] wall thickness */
  double defense_depth, defense_width; /* [m] */
  double center_radius;                /* [m] */
  double line_width;                   /* [m] */
  double wall_height;                  /* [m] the field boundary walls */
} pa_ssl_field;
/* 'A' (12 x 9 m) or 'B' (9 x 6 m), either case; -1 for anything else. */
int pa_ssl_field_get(char division, pa_ssl_field *f);

/* The ball's two-phase model on the floor (pa-sim's physics, SSL-Vision's
 * SSL_BallModelStraightTwoPhase in the geometry): it slides, then rolls
 * once its speed is down to PA_SSL_ROLL_RATIO of the kick's. */
#define PA_SSL_ACC_SLIDE 3.0 /* [m/s^2] deceleration while sliding */
#define PA_SSL_ACC_ROLL 0.35 /* [m/s^2] while rolling */
#define PA_SSL_ROLL_RATIO (5.0 / 7.0)

#endif
