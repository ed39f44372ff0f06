#ifndef FASHIOND_CV_EXT_H
#define FASHIOND_CV_EXT_H
#ifdef __cplusplus
extern "C" {
#endif
// fd_inpaint runs cv::inpaint (Telea when method==0, Navier-Stokes when 1)
// on a BGR 8UC3 buffer with an 8UC1 mask; dst has the size of src.
// Returns 0 on success, -1 on an OpenCV exception.
int fd_inpaint(const unsigned char* src, const unsigned char* mask, int w, int h,
               double radius, int method, unsigned char* dst);
#ifdef __cplusplus
}
#endif
#endif
